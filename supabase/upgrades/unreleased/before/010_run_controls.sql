-- Rerun, fork, move and pause (issue 41, docs/design/rerun.md), as
-- supabase/schemas/tables/040_runs.sql, 020_flows.sql and 046_run_events.sql have them: the runs'
-- lineage, pause and attempt floor, the events naming those actions, and whenExhausted 'pause'.
-- Nullable columns and a constant default rewrite nothing; the widened checks are added NOT VALID
-- and validated afterwards, so each table is scanned under a lock that lets readers and writers
-- go on.
alter table switchyard.runs add column forked_from uuid;

alter table switchyard.runs add column from_step text;

alter table switchyard.runs add column paused_at timestamptz;

alter table switchyard.runs add column pause_reason text;

alter table switchyard.runs add column attempt_floor int not null default 0;

create index runs_paused on switchyard.runs (paused_at) where paused_at is not null;

create index runs_forked_from on switchyard.runs (forked_from) where forked_from is not null;

alter table switchyard.run_events drop constraint run_events_event_check;

alter table switchyard.run_events add constraint run_events_event_check
  check (event in ('started', 'completed', 'failed', 'skipped', 'cancelled', 'retried',
                   'waiting', 'signalled', 'timed out', 'progress', 'rerun', 'forked', 'moved',
                   'paused', 'resumed')) not valid;

alter table switchyard.run_events validate constraint run_events_event_check;

alter table switchyard.steps drop constraint steps_when_exhausted_check;

alter table switchyard.steps add constraint steps_when_exhausted_check
  check (when_exhausted in ('fail', 'skip', 'skip-cascade', 'pause')) not valid;

alter table switchyard.steps validate constraint steps_when_exhausted_check;
