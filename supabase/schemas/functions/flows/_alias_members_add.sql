-- The versions a registry lists for an alias, checked and recorded as its members
-- (docs/design/versions.md): each must be compiled and belong to no other alias. Shared by
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
    perform switchyard._refuse('22023', 'versions_missing', 'versions', versions::text, format(
      'alias %s lists no versions', switchyard._clip(alias_name)),
      context => jsonb_build_object('alias', alias_name));
  end if;
  if array_position(versions, null) is not null then
    perform switchyard._refuse('22023', 'version_null', 'versions', versions::text, format(
      'alias %s: version %s of %s is null: list the concrete flow slugs of the alias, oldest first',
      switchyard._clip(alias_name), array_position(versions, null), switchyard._clip(versions::text, 200)),
      context => jsonb_build_object('alias', alias_name, 'position', array_position(versions, null)));
  end if;
  perform switchyard._assert_alias_case(alias_name);
  foreach v in array versions loop
    if not exists (select 1 from switchyard.flows f where f.flow_slug = v) then
      perform switchyard._refuse('22023', 'flow_not_compiled', 'versions', v, format(
        'alias %s: flow %s is not compiled', switchyard._clip(alias_name), switchyard._clip(v)),
        context => jsonb_build_object('alias', alias_name));
    end if;
    select m.alias into other_alias from switchyard.alias_members m where m.flow_slug = v;
    if other_alias is not null and other_alias <> alias_name then
      perform switchyard._refuse('23505', 'flow_in_other_alias', 'versions', v, format(
        'flow %s already belongs to alias %s; it cannot join alias %s',
        switchyard._clip(v), switchyard._clip(other_alias), switchyard._clip(alias_name)),
        context => jsonb_build_object('alias', alias_name, 'other_alias', other_alias));
    end if;
    insert into switchyard.alias_members (alias, flow_slug) values (alias_name, v)
    on conflict do nothing;
  end loop;
end
$$;
