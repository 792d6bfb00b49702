-- The concrete flow a caller's name starts: the flow itself, or an alias's active version
-- (docs/design/versions.md). Refuses a name that is neither (22023 flow_or_alias_unknown). The
-- value it echoes is clipped.
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
    perform switchyard._refuse('22023', 'flow_or_alias_unknown', 'flow_or_alias', flow_or_alias,
      format(
      'unknown flow or alias %s: compile it (start a worker that lists it) first',
      switchyard._clip(flow_or_alias)));
  end if;
  return found_slug;
end
$$;
