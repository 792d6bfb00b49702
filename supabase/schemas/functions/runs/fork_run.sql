-- Forks a run from one of its steps (docs/design/rerun.md): a new run, `forked_from` and
-- `from_step` naming its lineage, that keeps the output of every step of the original not
-- depending on `from_step` (transitively) that completed or was skipped there, and runs the rest.
-- `input` (default: the original's) is the new run's input; `to_flow` (default: the original's
-- flow) is a flow or an alias naming another concrete version of the same alias, accepted only
-- when _version_problems proves it: every kept step exists there with the same slug, kind and
-- dependencies, and `from_step` exists there. The fork has the original's owner and priority,
-- its started_as, and the deadline of the new flow's runTimeout; it takes no start key. The
-- original is held (FOR SHARE) while its outputs are copied, so a concurrent cancel or rerun of
-- it waits for the fork, or the fork for them. Kept steps are inserted completed (or skipped)
-- and write those events; a 'forked' event records who (`actor`, default the session's role),
-- the original, the step and the kept steps. Returns the new run's id. Refused: an unknown run
-- (22023 run_unknown), a step the original's flow does not have (22023 step_unknown), a target
-- of another alias (22023 flow_other_alias), an unproven version (22023 version_incompatible,
-- +problems: each incompatibility).
create or replace function switchyard.fork_run(
  run_id uuid, from_step text, input jsonb default null, to_flow text default null,
  actor text default null
)
returns uuid
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  src switchyard.runs;
  target text;
  kept text[];
  problems text[];
  new_run uuid := gen_random_uuid();
begin
  select * into src from switchyard.runs r where r.run_id = fork_run.run_id for share;
  if not found then
    perform switchyard._refuse('22023', 'run_unknown', 'run_id', fork_run.run_id::text, format(
      'fork_run: run %s does not exist', coalesce(fork_run.run_id::text, 'null')));
  end if;
  if not exists (select 1 from switchyard.steps st
                  where st.flow_slug = src.flow_slug and st.step_slug = from_step) then
    perform switchyard._refuse('22023', 'step_unknown', 'from_step', from_step, format(
      'fork_run: flow %s of run %s has no step %s; its steps: %s', to_json(src.flow_slug)::text,
      src.run_id, switchyard._clip(from_step),
      (select string_agg(st.step_slug, ', ' order by st.step_index) from switchyard.steps st
        where st.flow_slug = src.flow_slug)),
      context => jsonb_build_object('flow_slug', src.flow_slug, 'steps',
        (select jsonb_agg(st.step_slug order by st.step_index) from switchyard.steps st
          where st.flow_slug = src.flow_slug)));
  end if;
  target := case when to_flow is null then src.flow_slug else switchyard.resolve_flow(to_flow) end;
  if target <> src.flow_slug
     and switchyard._flow_alias(target) is distinct from switchyard._flow_alias(src.flow_slug) then
    perform switchyard._refuse('22023', 'flow_other_alias', 'to_flow', to_flow, format(
      'fork_run: %s is not a version of the alias of run %s (flow %s, alias %s): fork onto '
      'another concrete version of the same alias only', switchyard._clip(to_flow), src.run_id,
      to_json(src.flow_slug)::text, coalesce(switchyard._flow_alias(src.flow_slug), 'none')),
      context => jsonb_build_object('flow_slug', src.flow_slug, 'target', target));
  end if;
  select coalesce(array_agg(ss.step_slug order by ss.step_slug), '{}') into kept
    from switchyard.step_states ss
   where ss.run_id = src.run_id and ss.status in ('completed', 'skipped')
     and ss.step_slug <> all (switchyard._downstream_steps(src.flow_slug, array[from_step]));
  problems := switchyard._version_problems(src.flow_slug, target, kept, array[from_step]);
  if cardinality(problems) > 0 then
    perform switchyard._refuse('22023', 'version_incompatible', 'to_flow', to_flow, format(
      'fork_run: run %s cannot go onto %s from step %s: %s', src.run_id, to_json(target)::text,
      to_json(from_step)::text, array_to_string(problems, '; ')),
      context => jsonb_build_object('flow_slug', src.flow_slug, 'target', target,
                                    'problems', to_jsonb(problems)));
  end if;
  insert into switchyard.runs (run_id, flow_slug, started_as, input, remaining_steps, owner,
                               deadline_at, priority, forked_from, from_step)
  select new_run, target, src.started_as, coalesce(fork_run.input, src.input),
         (select count(*) from switchyard.steps st
           where st.flow_slug = target and st.step_slug <> all (kept)),
         src.owner,
         switchyard.clock_now() + f.run_timeout * interval '1 second',
         src.priority, src.run_id, from_step
    from switchyard.flows f where f.flow_slug = target;
  perform switchyard._run_note(new_run, 'forked', jsonb_build_object(
    'by', coalesce(actor, session_user::text), 'forked_from', src.run_id, 'from_step', from_step,
    'kept', to_jsonb(kept), 'from_flow', src.flow_slug));
  insert into switchyard.step_states (run_id, flow_slug, step_slug, status, remaining_deps, output,
                                      started_at, completed_at, skipped_at, skip_reason)
  select new_run, target, st.step_slug, coalesce(o.status, 'created'),
         case when o.step_slug is not null then 0
              else (select count(*) from switchyard.deps d
                     where d.flow_slug = target and d.step_slug = st.step_slug
                       and d.dep_slug <> all (kept)) end,
         o.output, o.started_at, o.completed_at, o.skipped_at, o.skip_reason
    from switchyard.steps st
    left join switchyard.step_states o
      on o.run_id = src.run_id and o.step_slug = st.step_slug and o.step_slug = any (kept)
   where st.flow_slug = target
   order by st.step_index;
  perform switchyard._start_ready_steps(new_run);
  perform switchyard._complete_run_if_done(new_run);
  return new_run;
end
$$;
