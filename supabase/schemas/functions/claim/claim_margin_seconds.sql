-- Visibility of a claimed message: the step's timeout plus this margin, so the
-- message does not reappear while its handler may legitimately still run.
create or replace function switchyard.claim_margin_seconds()
returns int
language sql
immutable
set search_path = ''
as $$ select 5 $$;
