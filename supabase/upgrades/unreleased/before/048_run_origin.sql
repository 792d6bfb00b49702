-- Where a run came from (issue 43, docs/design/origins.md), as supabase/schemas/tables/040_runs.sql
-- declares it: the run's origin and the index of the runs that have one. start_flow takes the
-- origin as a new last argument; its released signature is already dropped by 047_batches, so
-- the redefinition leaves no second overload.
alter table switchyard.runs add column origin jsonb;

create index runs_origin_started on switchyard.runs (started_at) where origin is not null;
