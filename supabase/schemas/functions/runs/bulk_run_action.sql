-- One action over the runs a filter matches (docs/design/rerun.md): 'rerun' (rerun_run from
-- `from_step` with `input_patch`), 'fork' (fork_run from `from_step` onto `to_flow`, with
-- `input_patch` as the fork's whole input when given), 'move'
-- (move_run onto `to_flow`), 'pause' or 'resume'. The filter: `flow_or_alias` (a run of that
-- concrete flow, started as that name, or of any version of that alias), `status`, started in
-- [`started_from`, `started_before`), and `error_contains` (case-insensitive, in the run's error).
-- Bounded and resumable: at most `max_runs` runs (1 to 10000), in run id order after `after_run`,
-- so the last run id answered is where the next call goes on. Each run is acted on alone (a
-- subtransaction): a refusal is that run's answer ('refused' with the message), never the
-- batch's. With `dry_run` (the default) every action is done and rolled back, so the answers
-- ('would rerun', …) count exactly what would change and nothing does. Idempotent when repeated:
-- a run already acted on no longer matches, or its action answers 'unchanged' or is refused.
-- Two calls at once act on each run once: a run another bulk call holds is answered 'busy'
-- (a transaction-scoped advisory lock, tried without waiting); a repeat picks it up if that call
-- rolled back. Returns one row per matched run: its id, the outcome and a detail.
create or replace function switchyard.bulk_run_action(
  action text, flow_or_alias text default null, status text default null,
  started_from timestamptz default null, started_before timestamptz default null,
  error_contains text default null, from_step text default null, to_flow text default null,
  input_patch jsonb default null, dry_run boolean default true, max_runs int default 100,
  after_run uuid default null, actor text default null
)
returns table (run_id uuid, outcome text, detail text)
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  candidate uuid;
  done text;
  said text;
  who text := coalesce(actor, session_user::text);
begin
  if action is null or action not in ('rerun', 'fork', 'move', 'pause', 'resume') then
    perform switchyard._refuse('22023', 'action_unknown', 'action', action, format(
      'bulk_run_action: action %s is invalid: use rerun, fork, move, pause or resume',
      coalesce(switchyard._clip(action), 'null')),
      context => jsonb_build_object('choices', jsonb_build_array('rerun', 'fork', 'move',
                                                                'pause', 'resume')));
  end if;
  if max_runs is null or max_runs not between 1 and 10000 then
    perform switchyard._refuse('22023', 'integer_range', 'max_runs', max_runs::text, format(
      'bulk_run_action: max_runs %s is invalid: use 1 to 10000 runs per call, and after_run to '
      'go on', coalesce(max_runs::text, 'null')),
      context => jsonb_build_object('min', 1, 'max', 10000));
  end if;
  if status is not null and status not in ('started', 'completed', 'failed', 'cancelled') then
    perform switchyard._refuse('22023', 'status_unknown', 'status', status, format(
      'bulk_run_action: status %s is invalid: use started, completed, failed or cancelled',
      switchyard._clip(status)));
  end if;
  if action in ('rerun', 'fork') and from_step is null then
    perform switchyard._refuse('22023', 'argument_missing', 'from_step', null, format(
      'bulk_run_action: %s needs from_step, the step the runs run again from', action));
  end if;
  if action = 'move' and to_flow is null then
    perform switchyard._refuse('22023', 'argument_missing', 'to_flow', null,
      'bulk_run_action: move needs to_flow, the version the runs go onto');
  end if;
  for candidate in
    select r.run_id from switchyard.runs r
     where (after_run is null or r.run_id > after_run)
       and (flow_or_alias is null or r.flow_slug = flow_or_alias or r.started_as = flow_or_alias
            or r.flow_slug in (select m.flow_slug from switchyard.alias_members m
                                where m.alias = flow_or_alias))
       and (bulk_run_action.status is null or r.status = bulk_run_action.status)
       and (started_from is null or r.started_at >= started_from)
       and (started_before is null or r.started_at < started_before)
       and (error_contains is null
            or strpos(lower(coalesce(r.error, '')), lower(error_contains)) > 0)
     order by r.run_id
     limit max_runs
  loop
    run_id := candidate;
    begin
      if not pg_try_advisory_xact_lock(
               hashtextextended('switchyard.bulk_run_action ' || candidate::text, 0)) then
        outcome := 'busy';
        detail := 'another bulk call holds this run: repeat the call to act on it';
      else
        case action
          when 'rerun' then
            done := 'rerun';
            said := format('%s step(s) run again',
              switchyard.rerun_run(candidate, from_step, input_patch, who));
          when 'fork' then
            done := 'forked';
            said := switchyard.fork_run(candidate, from_step, input_patch, to_flow, who)::text;
          when 'move' then
            done := case when switchyard.move_run(candidate, to_flow, who) then 'moved'
                         else 'unchanged' end;
            said := switchyard.resolve_flow(to_flow);
          when 'pause' then
            done := case when switchyard.pause_run(candidate, 'bulk pause', who) then 'paused'
                         else 'unchanged' end;
            said := null;
          else
            done := 'resumed';
            said := format('%s task(s) queued again', switchyard.resume_run(candidate, who));
        end case;
        outcome := done;
        detail := said;
        if dry_run then
          -- Caught below: it rolls this run's action back.
          raise exception using errcode = 'SY091', message = 'dry run: rolled back',
            detail = jsonb_build_object('rule', 'dry_run')::text;
        end if;
      end if;
    exception
      when sqlstate 'SY091' then
        outcome := 'would ' || done;
        detail := said;
      when sqlstate '22023' or sqlstate '55000' or sqlstate '23505' then
        outcome := 'refused';
        detail := sqlerrm;
    end;
    return next;
  end loop;
end
$$;
