-- Aliases (docs/ARCHITECTURE.md §6): one active concrete version per alias; every activation
-- is recorded.

create or replace function switchyard._record_activation(
  alias_name text, target text, previous text, source text
)
returns void
language sql
volatile
set search_path = ''
as $$
  insert into switchyard.aliases as a (alias, flow_slug, activated_at)
  values (alias_name, target, now())
  on conflict (alias) do update set flow_slug = excluded.flow_slug, activated_at = excluded.activated_at;
  insert into switchyard.alias_activations (alias, flow_slug, previous_flow_slug, source)
  values (alias_name, target, previous, source);
$$;

-- Called by a worker at start-up with the concrete versions its registry lists for
-- one alias, oldest first. The last one is the registry's target. The alias moves
-- to it only when the alias is new or points at an earlier listed version; it never
-- moves backwards, and an alias pointing elsewhere is left for the coverage check.
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
    if exists (select 1 from switchyard.aliases a where lower(a.alias) = lower(alias_name)) then
      raise exception using errcode = '23505', message = format(
        'alias %s collides with an existing alias of different case', to_json(alias_name)::text),
        detail = jsonb_build_object(
          'rule', 'alias_case_collision', 'argument', 'alias_name', 'value', alias_name,
          'existing_alias', (select a.alias from switchyard.aliases a
                              where lower(a.alias) = lower(alias_name) limit 1))::text;
    end if;
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
  insert into switchyard.alias_members (alias, flow_slug) values (alias_name, target_flow)
  on conflict do nothing;
  select a.flow_slug into previous from switchyard.aliases a where a.alias = alias_name for update;
  perform switchyard._record_activation(alias_name, target_flow, previous, 'operator');
end
$$;

-- The concrete flow an alias or slug names right now.
create or replace function switchyard.resolve_flow(flow_or_alias text)
returns text
language plpgsql
stable
security definer
set search_path = ''
as $$
declare
  found_slug text;
begin
  select a.flow_slug into found_slug from switchyard.aliases a where a.alias = flow_or_alias;
  if found_slug is null then
    select f.flow_slug into found_slug from switchyard.flows f where f.flow_slug = flow_or_alias;
  end if;
  if found_slug is null then
    raise exception using errcode = '22023', message = format(
      'unknown flow or alias %s: compile it (start a worker that lists it) first',
      coalesce(to_json(flow_or_alias)::text, 'null')),
      detail = jsonb_build_object(
        'rule', 'flow_or_alias_unknown', 'argument', 'flow_or_alias',
        'value', left(flow_or_alias, 200))::text;
  end if;
  return found_slug;
end
$$;
