-- How long a paused run's message stays hidden each time it is hidden
-- (docs/design/rerun.md): resume_run shows them again at once, so this only bounds how often a
-- paused run's
-- message is read and hidden again by a claim. One hour.
create or replace function switchyard.pause_hide_seconds()
returns int
language sql
immutable
set search_path = ''
as $$
  select 3600
$$;
