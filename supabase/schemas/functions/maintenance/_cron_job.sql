-- The kit's pg_cron jobs in this database (the keep-alive, retention and the scheduler's tick):
-- what schedule_keep_alive, schedule_prune and schedule_schedules and their unschedule_* share.
-- With a command, creates or updates the job `job_name` (pg_cron updates a job of the same name
-- and user instead of adding another) and returns its id: the schedule is checked first (22023
-- schedule_missing), then pg_cron (SY020, naming `caller`, with `way_out` as the hint: where
-- pg_cron lives in another database, or what to run instead), so a bad call is refused alike on
-- every database. Without a command, removes the job and returns the id it had, or null when
-- there was none or no pg_cron. Statements on cron run through EXECUTE: the schema exists only
-- where pg_cron does.
create or replace function switchyard._cron_job(
  caller text, job_name text, schedule text default null, command text default null,
  way_out text default null
)
returns bigint
language plpgsql
volatile
set search_path = ''
as $$
declare
  job bigint;
  installed boolean := exists (select 1 from pg_catalog.pg_extension e
                                where e.extname = 'pg_cron');
begin
  if _cron_job.command is null then
    if installed then
      execute 'select j.jobid from cron.job j where j.jobname = $1' into job using job_name;
      if job is not null then
        execute 'select cron.unschedule($1)' using job_name;
      end if;
    end if;
    return job;
  end if;
  if schedule is null or trim(schedule) = '' then
    perform switchyard._refuse('22023', 'schedule_missing', 'schedule', schedule,
      format('%s: schedule is missing: use cron syntax such as ''* * * * *''', caller));
  end if;
  if not installed then
    raise exception using errcode = 'SY020', message = format(
      '%s: pg_cron is not installed in database %s', caller, to_json(current_database())::text),
      detail = jsonb_build_object('database', current_database())::text,
      hint = coalesce(way_out, 'enable pg_cron in this database');
  end if;
  execute 'select cron.schedule($1, $2, $3)' into job using job_name, schedule, command;
  return job;
end
$$;
