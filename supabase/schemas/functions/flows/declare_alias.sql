-- The versions the project's registry declares for an alias, oldest first, the last one the
-- target: what `deno task compile` writes into a migration (docs/design/versions.md, Declared
-- aliases). Records the declaration (the latest replaces the one before), then moves the alias
-- to the target unless _alias_move_blocker says why not. So the compiled migrations, replayed
-- in any order on any database (incrementally, all at once on an empty one, after a backup),
-- leave each alias where the project's current registry puts it, without a worker: new, it is
-- activated; pointing at an earlier listed version, or at a retired one with no started run, it
-- moves when no live worker lacks the target. Otherwise it stays, and the answer says why:
-- 'activated', 'current', or 'deferred: <why>'. A held-back move is made by the first worker
-- whose registry has the target (sync_alias), or by the next declaration that may.
create or replace function switchyard.declare_alias(alias_name text, versions text[])
returns text
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  target text;
  current_target text;
  blocker text;
begin
  perform switchyard._alias_members_add(alias_name, versions);
  target := versions[cardinality(versions)];
  perform pg_advisory_xact_lock(hashtextextended('switchyard.alias:' || lower(alias_name), 0));
  insert into switchyard.alias_declarations as d (alias, versions, declared_at)
  values (alias_name, versions, switchyard.clock_now())
  on conflict (alias) do update set versions = excluded.versions, declared_at = excluded.declared_at;
  select a.flow_slug into current_target from switchyard.aliases a where a.alias = alias_name for update;
  if not found then
    perform switchyard._assert_alias_case(alias_name);   -- again: another spelling may have won
    perform switchyard._record_activation(alias_name, target, null, 'migration');
    return 'activated';
  elsif current_target = target then
    return 'current';
  end if;
  blocker := switchyard._alias_move_blocker(current_target, versions);
  if blocker is not null then
    raise notice 'alias % stays on %: %', alias_name, current_target, blocker;
    return 'deferred: ' || blocker;
  end if;
  perform switchyard._record_activation(alias_name, target, current_target, 'migration');
  return 'activated';
end
$$;
