-- Run and step events (docs/ARCHITECTURE.md §14): every transition of a run or of one of
-- its steps is a row in switchyard.run_events and a NOTIFY on channel
-- 'switchyard_run_events' whose payload is the run id only: never an input or an output.
-- Clients LISTEN, and on each notification (and after every reconnect) read the run's
-- events after the last one they saw, so a notification lost with a connection loses
-- nothing. The rows are written by triggers, so no SQL function that moves a run or a step
-- has to remember to write them.

-- One row per transition, numbered in commit order within a run: the triggers lock the
-- run's row before numbering its events, and every writer keeps that lock until it commits,
-- so a reader that saw event n of a run never later finds a smaller number for that run.
-- Deleted with its run (prune and delete_flow delete runs by id).
create table switchyard.run_events (
  event_id bigint generated always as identity,
  run_id uuid not null references switchyard.runs on delete cascade,
  owner uuid,                              -- the run's owner, copied for row-level security
  flow_slug text not null,
  step_slug text,                          -- null: an event of the run itself
  event text not null check (event in
    ('started', 'completed', 'failed', 'skipped', 'cancelled', 'retried')),
  created_at timestamptz not null default now(),
  -- One index: a reader always names the run (event_id > n within it), and so does the
  -- cascade from runs.
  primary key (run_id, event_id)
);

-- Row triggers whose WHEN condition is a status change: the many updates that change no
-- status (a run's or step's counters) never call a function. A transaction's notifications
-- are delivered at commit and identical ones are folded, so each run touched is notified once.

-- A run was inserted ('started') or changed status ('retried' when a failed run starts again).
create or replace function switchyard._run_event()
returns trigger
language plpgsql
security definer
set search_path = ''
as $$
begin
  insert into switchyard.run_events (run_id, owner, flow_slug, event)
  values (new.run_id, new.owner, new.flow_slug,
          case when tg_op = 'UPDATE' and old.status = 'failed' and new.status = 'started'
               then 'retried' else new.status end);
  perform pg_notify('switchyard_run_events', new.run_id::text);
  return null;
end
$$;

-- A step changed status (or was inserted past 'created'). The run is locked before the event
-- gets its number (see the table); every writer of a run's steps holds that lock already
-- (complete_tasks, fail_task and stall recovery lock the run, cancel_run and retry_run lock
-- it first, a run being started is new), so this costs a lookup by key.
create or replace function switchyard._step_event()
returns trigger
language plpgsql
security definer
set search_path = ''
as $$
declare
  run_owner uuid;
begin
  select r.owner into run_owner from switchyard.runs r where r.run_id = new.run_id for update;
  insert into switchyard.run_events (run_id, owner, flow_slug, step_slug, event)
  values (new.run_id, run_owner, new.flow_slug, new.step_slug, new.status);
  perform pg_notify('switchyard_run_events', new.run_id::text);
  return null;
end
$$;

create trigger runs_event_insert after insert on switchyard.runs
  for each row execute function switchyard._run_event();
create trigger runs_event_status after update of status on switchyard.runs
  for each row when (old.status is distinct from new.status)
  execute function switchyard._run_event();
create trigger step_states_event_insert after insert on switchyard.step_states
  for each row when (new.status <> 'created')
  execute function switchyard._step_event();
create trigger step_states_event_status after update of status on switchyard.step_states
  for each row when (old.status is distinct from new.status and new.status <> 'created')
  execute function switchyard._step_event();

-- Rows are readable only through row-level security: the table owner (the migration role)
-- and roles with BYPASSRLS (Supabase's service_role) read every row; a signed-in user reads
-- the events of the runs they own, once the opt-in grant of docs/ARCHITECTURE.md §14 gives
-- them SELECT (nothing is granted here).
alter table switchyard.run_events enable row level security;

-- Where the auth schema exists (Supabase), the policy for signed-in users; where Supabase's
-- supabase_realtime publication exists, the table joins it so supabase-js
-- `channel(...).on('postgres_changes', ...)` can follow a run (Realtime checks this policy
-- for each subscriber). Run switchyard.expose_run_events() again if either appears later.
-- Returns what it added. A step the running role may not take (it does not own the table or
-- the publication) is skipped with a notice naming the statement to run as their owner, so a
-- migration never fails on it.
create or replace function switchyard.expose_run_events()
returns text[]
language plpgsql
volatile
set search_path = ''
as $$
declare
  done text[] := '{}';
begin
  -- auth.uid() looked up in the catalog: to_regprocedure needs USAGE on schema auth.
  if exists (select 1 from pg_catalog.pg_proc p
               join pg_catalog.pg_namespace ns on ns.oid = p.pronamespace
              where ns.nspname = 'auth' and p.proname = 'uid' and p.pronargs = 0)
     and exists (select 1 from pg_catalog.pg_roles where rolname = 'authenticated')
     and not exists (select 1 from pg_catalog.pg_policies
                      where schemaname = 'switchyard' and tablename = 'run_events'
                        and policyname = 'run_events_owner_read') then
    begin
      create policy run_events_owner_read on switchyard.run_events
        for select to authenticated using (owner = (select auth.uid()));
      done := done || 'policy run_events_owner_read'::text;
    exception when insufficient_privilege then
      raise notice using message = format(
        'switchyard.expose_run_events: %s may not create the policy run_events_owner_read (%s); '
        'run select switchyard.expose_run_events() as the owner of switchyard.run_events',
        current_user, sqlerrm);
    end;
  end if;
  if exists (select 1 from pg_catalog.pg_publication
              where pubname = 'supabase_realtime' and not puballtables)
     and not exists (select 1 from pg_catalog.pg_publication_tables
                      where pubname = 'supabase_realtime' and schemaname = 'switchyard'
                        and tablename = 'run_events') then
    begin
      alter publication supabase_realtime add table switchyard.run_events;
      done := done || 'publication supabase_realtime'::text;
    exception when insufficient_privilege then
      raise notice using message = format(
        'switchyard.expose_run_events: %s may not add switchyard.run_events to the publication '
        'supabase_realtime (%s); run alter publication supabase_realtime add table '
        'switchyard.run_events as its owner', current_user, sqlerrm);
    end;
  end if;
  return done;
end
$$;

select switchyard.expose_run_events();

-- Privileges as in the grants migration: nothing for PUBLIC, anon or authenticated; the
-- service role reads the events and may expose them.
revoke all on switchyard.run_events from public;
revoke execute on function
  switchyard._run_event(),
  switchyard._step_event(),
  switchyard.expose_run_events()
from public;

do $$
declare
  role_name text;
begin
  foreach role_name in array array['anon', 'authenticated'] loop
    if exists (select 1 from pg_roles where rolname = role_name) then
      execute format('revoke all on switchyard.run_events from %I', role_name);
      execute format('revoke execute on function switchyard.expose_run_events() from %I',
                     role_name);
    end if;
  end loop;
  if exists (select 1 from pg_roles where rolname = 'service_role') then
    grant select on switchyard.run_events to service_role;
    grant execute on function switchyard.expose_run_events() to service_role;
  end if;
end
$$;
