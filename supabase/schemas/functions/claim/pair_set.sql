-- The key of a support set of `flow/step` pairs in switchyard.pair_sets (a hash of
-- the sorted, de-duplicated set), adding the set when it is new. Registration calls
-- it once per worker; claims then look pairs up by index.
create or replace function switchyard.pair_set(pairs text[])
returns text
language plpgsql
volatile
set search_path = ''
as $$
declare
  key text;
begin
  select encode(sha256(convert_to(
           coalesce(array_agg(distinct p.pair order by p.pair), '{}')::text, 'UTF8')), 'hex')
    into key
    from unnest(pairs) as p(pair)
   where p.pair is not null;
  if not exists (select 1 from switchyard.pair_sets s where s.pair_set = key) then
    insert into switchyard.pair_sets (pair_set, pair)
    select distinct key, p.pair from unnest(pairs) as p(pair) where p.pair is not null
    on conflict do nothing;
  end if;
  return key;
end
$$;
