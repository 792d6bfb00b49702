-- The alias a concrete flow is a version of (docs/design/versions.md): the alias that lists it
-- as a member, else one whose active version it is; null for a flow of no alias. Fork and move
-- go only between versions of one alias (docs/design/rerun.md).
create or replace function switchyard._flow_alias(flow text)
returns text
language sql
stable
set search_path = ''
as $$
  select coalesce(
    (select m.alias from switchyard.alias_members m where m.flow_slug = flow),
    (select min(a.alias) from switchyard.aliases a where a.flow_slug = flow))
$$;
