-- The columns of a table's primary key, in the key's order, with their types (format_type):
-- what a row trigger's per-row key and its backfill's cursor are made of. Empty without one.
create or replace function switchyard._primary_key_columns(rel oid)
returns table (column_name text, column_type text)
language sql
stable
set search_path = ''
as $$
  select a.attname::text, pg_catalog.format_type(a.atttypid, a.atttypmod)
    from pg_catalog.pg_index i
    cross join lateral unnest(i.indkey) with ordinality as k(attnum, n)
    join pg_catalog.pg_attribute a on a.attrelid = i.indrelid and a.attnum = k.attnum
   where i.indrelid = rel and i.indisprimary
   order by k.n
$$;
