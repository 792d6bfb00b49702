-- The run id of a 'flow' step's child (docs/design/waits.md): derived from the parent run
-- and the step, so a retry of the parent finds the same child (child_runs keeps the link too).
-- Shaped as a version-8 UUID (RFC 9562's custom version) from an MD5 of the pair: anyone who
-- knows the parent's id can compute it, but it never has the shape of a random (version 4) id,
-- the only ids start_user_run takes, so no signed-in user can start a run under it first and
-- make the parent's child fail to start. (Schedules' tick ids are version 5, _schedule_run_id.)
create or replace function switchyard._child_run_id(parent uuid, step text)
returns uuid
language sql
immutable
set search_path = ''
as $$
  select (substr(h, 1, 12) || '8' || substr(h, 14, 3) || '9' || substr(h, 18, 15))::uuid
    from (select md5('switchyard child ' || parent::text || '/' || step) as h) x
$$;
