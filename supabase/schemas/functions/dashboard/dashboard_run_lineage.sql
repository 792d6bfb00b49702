-- What the dashboard's runs table shows of the run controls (docs/design/rerun.md) for
-- these runs: lineage (the run a fork was made from, and the step it was forked from), the pause
-- (when and why), and the concrete versions of the run's alias other than its own, the targets a
-- move or a fork may name (the SQL core still proves each one when asked). Runs with none of it
-- are absent. One probe of the run row and one of its alias per run.
create or replace function switchyard.dashboard_run_lineage(run_ids uuid[])
returns table (
  run_id uuid, forked_from uuid, from_step text, paused_at timestamptz, pause_reason text,
  versions text[]
)
language sql
stable
security definer
set search_path = ''
as $$
  select r.run_id, r.forked_from, r.from_step, r.paused_at, r.pause_reason, v.versions
    from switchyard.runs r
    cross join lateral (
      select coalesce(array_agg(o.flow_slug order by o.flow_slug), '{}') as versions
        from switchyard.alias_members m
        join switchyard.alias_members o on o.alias = m.alias and o.flow_slug <> m.flow_slug
       where m.flow_slug = r.flow_slug
    ) v
   where r.run_id = any (run_ids)
     and (r.forked_from is not null or r.paused_at is not null or cardinality(v.versions) > 0)
$$;
