-- Run deadlines (issue 25): a flow's runTimeout and a run's deadline, as the table files have them.
alter table switchyard.flows add column run_timeout int
  check (run_timeout between 1 and 31536000);

alter table switchyard.runs add column deadline_at timestamptz;

create index runs_deadline on switchyard.runs (deadline_at)
  where status = 'started' and deadline_at is not null;
