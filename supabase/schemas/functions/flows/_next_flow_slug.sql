-- The slug a SY004 refusal suggests for a changed flow: the next free one in the flow's own
-- naming, its trailing number plus one (ordersV3 -> ordersV4, not ordersV3V2), or V2 added to a
-- slug without one, skipping compiled flows (case-insensitively). cli/_shape_change.ts
-- (nextSlug) gives compile the same.
create or replace function switchyard._next_flow_slug(slug text)
returns text
language plpgsql
stable
set search_path = ''
as $$
declare
  prefix text := coalesce(substring(slug from '^(.*?)[0-9]+$'), slug || 'V');
  n numeric := coalesce(substring(slug from '([0-9]+)$')::numeric + 1, 2);
begin
  while exists (select 1 from switchyard.flows f where lower(f.flow_slug) = lower(prefix || n)) loop
    n := n + 1;
  end loop;
  return prefix || n;
end
$$;
