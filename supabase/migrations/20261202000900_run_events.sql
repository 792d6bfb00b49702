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
  event_id bigint generated always as identity primary key,
  run_id uuid not null references switchyard.runs on delete cascade,
  owner uuid,                              -- the run's owner, copied for row-level security
  flow_slug text not null,
  step_slug text,                          -- null: an event of the run itself
  event text not null check (event in
    ('started', 'completed', 'failed', 'skipped', 'cancelled', 'retried')),
  created_at timestamptz not null default now()
);
create index run_events_run on switchyard.run_events (run_id, event_id);

-- Statement-level triggers with transition tables: a batch of completions (one statement
-- over many step states) writes its events in one insert and one notification per run,
-- not one trigger call per row. PostgreSQL allows one event per trigger with transition
-- tables, hence one function per table and operation.

-- Runs inserted: 'started'.
create or replace function switchyard._run_events_inserted()
returns trigger
language plpgsql
security definer
set search_path = ''
as $$
begin
  insert into switchyard.run_events (run_id, owner, flow_slug, event)
  select n.run_id, n.owner, n.flow_slug, n.status from new_rows n order by n.run_id;
  perform pg_notify('switchyard_run_events', n.run_id::text)
     from (select distinct x.run_id from new_rows x) n;
  return null;
end
$$;

-- Runs whose status changed: the new status ('retried' when a failed run starts again).
create or replace function switchyard._run_events_updated()
returns trigger
language plpgsql
security definer
set search_path = ''
as $$
begin
  insert into switchyard.run_events (run_id, owner, flow_slug, event)
  select n.run_id, n.owner, n.flow_slug,
         case when o.status = 'failed' and n.status = 'started' then 'retried' else n.status end
    from new_rows n join old_rows o on o.run_id = n.run_id
   where o.status is distinct from n.status
   order by n.run_id;
  if found then
    perform pg_notify('switchyard_run_events', c.run_id::text)
       from (select distinct n.run_id from new_rows n join old_rows o on o.run_id = n.run_id
              where o.status is distinct from n.status) c;
  end if;
  return null;
end
$$;

-- Step states inserted past 'created', or whose status changed to anything but 'created'.
-- The runs are locked first, in run order as complete_tasks locks them, so their events are
-- numbered in commit order (see the table).
create or replace function switchyard._step_events_inserted()
returns trigger
language plpgsql
security definer
set search_path = ''
as $$
begin
  perform 1 from switchyard.runs r
   where r.run_id in (select n.run_id from new_rows n where n.status <> 'created')
   order by r.run_id for update;
  if not found then
    return null;
  end if;
  insert into switchyard.run_events (run_id, owner, flow_slug, step_slug, event)
  select n.run_id, r.owner, n.flow_slug, n.step_slug, n.status
    from new_rows n join switchyard.runs r on r.run_id = n.run_id
   where n.status <> 'created'
   order by n.run_id, n.step_slug;
  perform pg_notify('switchyard_run_events', c.run_id::text)
     from (select distinct n.run_id from new_rows n where n.status <> 'created') c;
  return null;
end
$$;

create or replace function switchyard._step_events_updated()
returns trigger
language plpgsql
security definer
set search_path = ''
as $$
declare
  changed uuid[];
begin
  select coalesce(array_agg(distinct n.run_id), '{}') into changed
    from new_rows n join old_rows o on o.run_id = n.run_id and o.step_slug = n.step_slug
   where o.status is distinct from n.status and n.status <> 'created';
  if cardinality(changed) = 0 then
    return null;
  end if;
  perform 1 from switchyard.runs r where r.run_id = any (changed) order by r.run_id for update;
  insert into switchyard.run_events (run_id, owner, flow_slug, step_slug, event)
  select n.run_id, r.owner, n.flow_slug, n.step_slug, n.status
    from new_rows n
    join old_rows o on o.run_id = n.run_id and o.step_slug = n.step_slug
    join switchyard.runs r on r.run_id = n.run_id
   where o.status is distinct from n.status and n.status <> 'created'
   order by n.run_id, n.step_slug;
  perform pg_notify('switchyard_run_events', c.run_id::text) from unnest(changed) as c(run_id);
  return null;
end
$$;

create trigger runs_events_inserted after insert on switchyard.runs
  referencing new table as new_rows
  for each statement execute function switchyard._run_events_inserted();
create trigger runs_events_updated after update on switchyard.runs
  referencing old table as old_rows new table as new_rows
  for each statement execute function switchyard._run_events_updated();
create trigger step_states_events_inserted after insert on switchyard.step_states
  referencing new table as new_rows
  for each statement execute function switchyard._step_events_inserted();
create trigger step_states_events_updated after update on switchyard.step_states
  referencing old table as old_rows new table as new_rows
  for each statement execute function switchyard._step_events_updated();

-- Rows are readable only through row-level security: the table owner (the migration role)
-- and roles with BYPASSRLS (Supabase's service_role) read every row; a signed-in user reads
-- the events of the runs they own, once the opt-in grant of docs/ARCHITECTURE.md §14 gives
-- them SELECT (nothing is granted here).
alter table switchyard.run_events enable row level security;

-- Where the auth schema exists (Supabase), the policy for signed-in users; where Supabase's
-- supabase_realtime publication exists, the table joins it so supabase-js
-- `channel(...).on('postgres_changes', ...)` can follow a run (Realtime checks this policy
-- for each subscriber). Run switchyard.expose_run_events() again if either appears later.
-- Returns what it added.
create or replace function switchyard.expose_run_events()
returns text[]
language plpgsql
volatile
set search_path = ''
as $$
declare
  done text[] := '{}';
begin
  if to_regprocedure('auth.uid()') is not null
     and exists (select 1 from pg_catalog.pg_roles where rolname = 'authenticated')
     and not exists (select 1 from pg_catalog.pg_policies
                      where schemaname = 'switchyard' and tablename = 'run_events'
                        and policyname = 'run_events_owner_read') then
    create policy run_events_owner_read on switchyard.run_events
      for select to authenticated using (owner = (select auth.uid()));
    done := done || 'policy run_events_owner_read'::text;
  end if;
  if exists (select 1 from pg_catalog.pg_publication
              where pubname = 'supabase_realtime' and not puballtables)
     and not exists (select 1 from pg_catalog.pg_publication_tables
                      where pubname = 'supabase_realtime' and schemaname = 'switchyard'
                        and tablename = 'run_events') then
    alter publication supabase_realtime add table switchyard.run_events;
    done := done || 'publication supabase_realtime'::text;
  end if;
  return done;
end
$$;

select switchyard.expose_run_events();

-- Privileges as in the grants migration: nothing for PUBLIC, anon or authenticated; the
-- service role reads the events and may expose them.
revoke all on switchyard.run_events from public;
revoke execute on function
  switchyard._run_events_inserted(),
  switchyard._run_events_updated(),
  switchyard._step_events_inserted(),
  switchyard._step_events_updated(),
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
