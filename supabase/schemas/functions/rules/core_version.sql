-- The release of this database's SQL core (docs/design/testing.md#upgrades-with-work-in-flight). A
-- runtime checks it at
-- start, so a runtime deployed before its migrations refuses with "apply the migrations".
create or replace function switchyard.core_version()
returns text
language sql
immutable
set search_path = ''
as $$
  select '0.4.0'::text
$$;
