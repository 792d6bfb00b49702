-- Alias refusals that name the value and the rule (docs/ARCHITECTURE.md §6): sync_alias refuses a
-- null version with its position (it reported "flow  is not compiled"), and both sync_alias and
-- activate_alias refuse a name that differs only in case from an existing alias with both
-- spellings (activate_alias surfaced a raw unique-key error). The rest as in
-- 20261201000600_function_aliases.sql.

-- Aliases are unique case-insensitively (docs/ARCHITECTURE.md §2): refuses a name that only
-- differs in case from an existing alias (or alias membership), naming both spellings.
create or replace function switchyard._assert_alias_case(alias_name text)
returns void
language plpgsql
stable
set search_path = ''
as $$
declare
  existing text;
begin
  select a.alias into existing from switchyard.aliases a
   where lower(a.alias) = lower(alias_name) and a.alias <> alias_name
   limit 1;
  if existing is null then
    select m.alias into existing from switchyard.alias_members m
     where lower(m.alias) = lower(alias_name) and m.alias <> alias_name
     limit 1;
  end if;
  if existing is not null then
    raise exception using errcode = '23505', message = format(
      'alias %s collides with alias %s: aliases are unique case-insensitively; use %s',
      to_json(alias_name)::text, to_json(existing)::text, to_json(existing)::text),
      detail = jsonb_build_object(
        'rule', 'alias_case_collision', 'argument', 'alias_name', 'value', alias_name,
        'existing_alias', existing)::text;
  end if;
end
$$;

-- Called by a worker at start-up with the concrete versions its registry lists for one alias,
-- oldest first (see 20261201000600_function_aliases.sql).
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
  v text;
  other_alias text;
begin
  perform switchyard.assert_slug('alias', alias_name);
  if versions is null or cardinality(versions) = 0 then
    raise exception using errcode = '22023', message = format(
      'alias %s lists no versions', to_json(alias_name)::text),
      detail = jsonb_build_object(
        'rule', 'versions_missing', 'argument', 'versions', 'value', versions::text,
        'alias', alias_name)::text;
  end if;
  if array_position(versions, null) is not null then
    raise exception using errcode = '22023', message = format(
      'alias %s: version %s of %s is null: list the concrete flow slugs of the alias, oldest first',
      to_json(alias_name)::text, array_position(versions, null), versions::text),
      detail = jsonb_build_object(
        'rule', 'version_null', 'argument', 'versions', 'value', left(versions::text, 200),
        'alias', alias_name, 'position', array_position(versions, null))::text;
  end if;
  perform switchyard._assert_alias_case(alias_name);
  target := versions[cardinality(versions)];
  foreach v in array versions loop
    if not exists (select 1 from switchyard.flows f where f.flow_slug = v) then
      raise exception using errcode = '22023', message = format(
        'alias %s: flow %s is not compiled', to_json(alias_name)::text, to_json(v)::text),
        detail = jsonb_build_object(
          'rule', 'flow_not_compiled', 'argument', 'versions', 'value', left(v, 200),
          'alias', alias_name)::text;
    end if;
    select m.alias into other_alias from switchyard.alias_members m where m.flow_slug = v;
    if other_alias is not null and other_alias <> alias_name then
      raise exception using errcode = '23505', message = format(
        'flow %s already belongs to alias %s; it cannot join alias %s',
        to_json(v)::text, to_json(other_alias)::text, to_json(alias_name)::text),
        detail = jsonb_build_object(
          'rule', 'flow_in_other_alias', 'argument', 'versions', 'value', v,
          'alias', alias_name, 'other_alias', other_alias)::text;
    end if;
    insert into switchyard.alias_members (alias, flow_slug) values (alias_name, v)
    on conflict do nothing;
  end loop;

  perform pg_advisory_xact_lock(hashtextextended('switchyard.alias:' || lower(alias_name), 0));
  select a.flow_slug into current_target from switchyard.aliases a where a.alias = alias_name for update;
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
  return 'unchanged';
end
$$;

-- Operators move an alias explicitly (also backwards, for a rollback).
create or replace function switchyard.activate_alias(alias_name text, target_flow text)
returns void
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  previous text;
  other_alias text;
begin
  perform switchyard.assert_slug('alias', alias_name);
  perform switchyard._assert_alias_case(alias_name);
  if not exists (select 1 from switchyard.flows f where f.flow_slug = target_flow) then
    raise exception using errcode = '22023', message = format(
      'cannot activate alias %s: flow %s is not compiled', to_json(alias_name)::text,
      coalesce(to_json(target_flow)::text, 'null')),
      detail = jsonb_build_object(
        'rule', 'flow_not_compiled', 'argument', 'target_flow', 'value', left(target_flow, 200),
        'alias', alias_name)::text;
  end if;
  select m.alias into other_alias from switchyard.alias_members m where m.flow_slug = target_flow;
  if other_alias is not null and other_alias <> alias_name then
    raise exception using errcode = '23505', message = format(
      'cannot activate alias %s: flow %s belongs to alias %s',
      to_json(alias_name)::text, to_json(target_flow)::text, to_json(other_alias)::text),
      detail = jsonb_build_object(
        'rule', 'flow_in_other_alias', 'argument', 'target_flow', 'value', target_flow,
        'alias', alias_name, 'other_alias', other_alias)::text;
  end if;
  perform pg_advisory_xact_lock(hashtextextended('switchyard.alias:' || lower(alias_name), 0));
  perform switchyard._assert_alias_case(alias_name);   -- again: another spelling may have won
  insert into switchyard.alias_members (alias, flow_slug) values (alias_name, target_flow)
  on conflict do nothing;
  select a.flow_slug into previous from switchyard.aliases a where a.alias = alias_name for update;
  perform switchyard._record_activation(alias_name, target_flow, previous, 'operator');
end
$$;

revoke execute on function switchyard._assert_alias_case(text) from public;
