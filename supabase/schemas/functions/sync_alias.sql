-- ---- sync_alias (latest: 20261202000400_function_alias_rules.sql): the values it echoes clipped
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
      'alias %s lists no versions', switchyard._clip(alias_name)),
      detail = jsonb_build_object(
        'rule', 'versions_missing', 'argument', 'versions', 'value', left(versions::text, 200),
        'alias', alias_name)::text;
  end if;
  if array_position(versions, null) is not null then
    raise exception using errcode = '22023', message = format(
      'alias %s: version %s of %s is null: list the concrete flow slugs of the alias, oldest first',
      switchyard._clip(alias_name), array_position(versions, null), switchyard._clip(versions::text, 200)),
      detail = jsonb_build_object(
        'rule', 'version_null', 'argument', 'versions', 'value', left(versions::text, 200),
        'alias', alias_name, 'position', array_position(versions, null))::text;
  end if;
  perform switchyard._assert_alias_case(alias_name);
  target := versions[cardinality(versions)];
  foreach v in array versions loop
    if not exists (select 1 from switchyard.flows f where f.flow_slug = v) then
      raise exception using errcode = '22023', message = format(
        'alias %s: flow %s is not compiled', switchyard._clip(alias_name), switchyard._clip(v)),
        detail = jsonb_build_object(
          'rule', 'flow_not_compiled', 'argument', 'versions', 'value', left(v, 200),
          'alias', alias_name)::text;
    end if;
    select m.alias into other_alias from switchyard.alias_members m where m.flow_slug = v;
    if other_alias is not null and other_alias <> alias_name then
      raise exception using errcode = '23505', message = format(
        'flow %s already belongs to alias %s; it cannot join alias %s',
        switchyard._clip(v), switchyard._clip(other_alias), switchyard._clip(alias_name)),
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
