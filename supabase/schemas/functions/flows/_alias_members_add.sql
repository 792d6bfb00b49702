-- The versions a registry lists for an alias, checked and recorded as its members
-- (docs/ARCHITECTURE.md §6): each must be compiled and belong to no other alias. Shared by
-- sync_alias (a worker's start-up) and declare_alias (a compiled migration); the values it
-- echoes clipped.
create or replace function switchyard._alias_members_add(alias_name text, versions text[])
returns void
language plpgsql
volatile
set search_path = ''
as $$
declare
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
end
$$;
