-- Cancels a started run (docs/design/client.md); every transition is a run event. In one
-- transaction, holding the run's row lock (which complete_tasks and fail_task take too, so none
-- of them interleaves):
--   - the messages of its queued tasks are archived (nothing of the run stays visible) and
--     those tasks become 'cancelled';
--   - its created and started steps become 'cancelled';
--   - the run becomes 'cancelled' with the reason in `error`.
-- Tasks a worker is running finish: their late answer is refused, by complete_tasks (ok
-- false, no output kept) and by fail_task ('cancelled', no failed attempt counted), which
-- archive the message and cancel the task; nothing changes a step or starts a successor. A cancelled run
-- never starts another step. Returns true when it cancelled the run, false when it already was
-- cancelled (the first reason is kept). A completed or failed run is refused (55000).
create or replace function switchyard.cancel_run(run_id uuid, reason text)
returns boolean
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  run switchyard.runs;
  child uuid;
begin
  if reason is null or btrim(reason) = '' then
    perform switchyard._refuse('22023', 'reason_missing', 'reason', reason, format(
      'cancel_run(%s): reason %s is invalid: say why the run is cancelled',
      coalesce(cancel_run.run_id::text, 'null'), coalesce(to_json(reason)::text, 'null')),
      context => jsonb_build_object('run_id', cancel_run.run_id));
  end if;
  -- The run's family (a child flow's runs, its parent) bottom-up, before the run itself goes on
  -- to lock its children: a child ending meanwhile locks child then parent too.
  perform switchyard._lock_run_family(cancel_run.run_id);
  select * into run from switchyard.runs r where r.run_id = cancel_run.run_id for update;
  if not found then
    perform switchyard._refuse('22023', 'run_unknown', 'run_id', cancel_run.run_id::text, format(
      'cancel_run: run %s does not exist', coalesce(cancel_run.run_id::text, 'null')));
  end if;
  if run.status = 'cancelled' then
    return false;
  end if;
  if run.status <> 'started' then
    perform switchyard._refuse('55000', 'run_not_started', 'run_id', run.run_id::text, format(
      'cancel_run: run %s is %s; only a started run can be cancelled',
      run.run_id, run.status),
      context => jsonb_build_object('status', run.status));
  end if;
  -- The queued tasks before their messages, in (queue, message id) order, as start_tasks
  -- locks them (a task, then its message): a claim in flight cannot deadlock with this.
  perform 1 from switchyard.step_tasks t
   where t.run_id = run.run_id and t.status = 'queued'
   order by t.queue_name, t.message_id
     for update;
  -- Their messages, one archive per queue (as a final failure archives them).
  perform switchyard._archive_queued(run.run_id);
  -- Cancelled, not queued: nothing that looks for queued work (a sweep that re-sends a
  -- queued task's missing message, drain counts) finds them.
  update switchyard.step_tasks t
     set status = 'cancelled', worker_id = null
   where t.run_id = run.run_id and t.status = 'queued';
  update switchyard.step_states ss
     set status = 'cancelled', wait_due = null
   where ss.run_id = run.run_id and ss.status in ('created', 'started');
  update switchyard.runs r
     set status = 'cancelled', cancelled_at = switchyard.clock_now(),
         error = format('cancelled: %s', left(reason, 4000))
   where r.run_id = run.run_id;
  -- Its child runs (flow steps, docs/design/waits.md) that are still started, and theirs.
  for child in
    select c.run_id from switchyard.child_runs c
      join switchyard.runs r on r.run_id = c.run_id and r.status = 'started'
     where c.parent_run_id = run.run_id
     order by c.run_id
  loop
    perform switchyard.cancel_run(child, format('its parent run %s was cancelled', run.run_id));
  end loop;
  return true;
end
$$;
