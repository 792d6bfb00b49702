-- A worker's start-up moves an alias forward within its registry's list, never backwards
-- (docs/design/versions.md). Also, when the project's latest declaration (declare_alias) has this
-- registry's target and the current target may be left (_alias_move_blocker, without the
-- live-worker rule: this worker is the one that covers the target, as with a forward move), it
-- moves to it: so a move a compiled migration held back, from a retired version or while older
-- workers were live, is made by the first worker with the declared registry. The values it
-- echoes are clipped.
create or replace function switchyard.sync_alias(alias_name text, versions text[])
returns text
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  target text;
  current_target text;
  declared switchyard.alias_declarations;
  activated timestamptz;
begin
  perform switchyard._alias_members_add(alias_name, versions);
  target := versions[cardinality(versions)];

  perform pg_advisory_xact_lock(hashtextextended('switchyard.alias:' || lower(alias_name), 0));
  select a.flow_slug, a.activated_at into current_target, activated
    from switchyard.aliases a where a.alias = alias_name for update;
  if not found then
    perform switchyard._assert_alias_case(alias_name);   -- again: another spelling may have won
    perform switchyard._record_activation(alias_name, target, null, 'worker');
    return 'activated';
  elsif current_target = target then
    return 'current';
  elsif current_target = any (versions) then
    perform switchyard._record_activation(alias_name, target, current_target, 'worker');
    return 'activated';
  end if;
  -- The current target is not in this registry. The project's declaration, newer than the
  -- alias's last move (an operator's later activation stands), may move it to this target.
  select * into declared from switchyard.alias_declarations d where d.alias = alias_name;
  if found and declared.versions[cardinality(declared.versions)] = target
     and declared.declared_at > activated
     and not exists (select 1 from switchyard.runs r
                      where r.flow_slug = current_target and r.status = 'started') then
    perform switchyard._record_activation(alias_name, target, current_target, 'worker');
    return 'activated';
  end if;
  return 'unchanged';
end
$$;
