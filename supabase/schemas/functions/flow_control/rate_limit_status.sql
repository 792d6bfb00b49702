-- The rate limits for operators and the dashboard
-- (docs/design/flow-control.md#rate-limits-and-keyed-concurrency): each limit
-- with its tokens now, and the steps (flow/step) that name it; a name steps use without a row
-- (no limit) is listed with null rate.
create or replace function switchyard.rate_limit_status()
returns table (
  name text, rate int, per_seconds int, burst int, tokens double precision,
  updated_at timestamptz, steps text[]
)
language sql
stable
security definer
set search_path = ''
as $$
  select n.name, l.rate, l.per_seconds, l.burst,
         case when l.name is not null then
           case when l.refilled_at > switchyard.clock_now() then l.tokens
                else least(l.burst, l.tokens + extract(epoch from switchyard.clock_now() - l.refilled_at)
                                          * l.rate::double precision / l.per_seconds) end end,
         l.updated_at,
         coalesce((select array_agg(s.flow_slug || '/' || s.step_slug
                                    order by s.flow_slug, s.step_slug)
                     from switchyard.steps s where s.rate_limit = n.name), '{}')
    from (select r.name from switchyard.rate_limits r
          union
          select s.rate_limit from switchyard.steps s where s.rate_limit is not null) n
    left join switchyard.rate_limits l on l.name = n.name
   order by n.name
$$;
