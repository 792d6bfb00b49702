-- Completed tasks per queue and minute over the last `minutes` minutes (1-1440, default 60),
-- the current minute last, every minute present (0 when none). A completion archives its
-- message in the same transaction (§5.5), so the count starts from PGMQ's archive table,
-- whose archived_at index bounds it to the window, and keeps the archived messages whose
-- task completed (stale and failed messages are archived too). archived_at is PGMQ's time: the
-- window's start is moved to PGMQ's clock for that bound (the same instant in production, where
-- both clocks are now(); docs/ARCHITECTURE.md §17).
create or replace function switchyard.dashboard_throughput(minutes int default 60)
returns table (queue_name text, minute timestamptz, completed int)
language plpgsql
stable
security definer
set search_path = ''
as $$
declare
  q record;
  span int := least(greatest(coalesce(dashboard_throughput.minutes, 60), 1), 1440);
  first_minute timestamptz :=
    date_trunc('minute', switchyard.clock_now()) - make_interval(mins => span - 1);
  first_archived timestamptz :=
    first_minute - (switchyard.clock_now() - switchyard.queue_now());
  tbl text;
begin
  for q in select x.queue_name, x.pgmq_name from switchyard.queues x order by x.queue_name loop
    tbl := pgmq.format_table_name(q.pgmq_name, 'a');
    if to_regclass(format('pgmq.%I', tbl)) is null then
      return query
        select q.queue_name, m.minute, 0
          from generate_series(first_minute, date_trunc('minute', switchyard.clock_now()),
                               interval '1 minute') as m(minute);
      continue;
    end if;
    return query execute format(
      'select $1, m.minute, coalesce(c.n, 0)::int
         from generate_series($2, date_trunc(''minute'', switchyard.clock_now()),
                              interval ''1 minute'') as m(minute)
         left join (select date_trunc(''minute'', t.completed_at) as minute, count(*) as n
                      from pgmq.%I a
                      join switchyard.step_tasks t
                        on t.queue_name = $1 and t.message_id = a.msg_id and t.status = ''completed''
                     where a.archived_at >= $3
                     group by 1) c on c.minute = m.minute
        order by m.minute', tbl)
      using q.queue_name, first_minute, first_archived;
  end loop;
end
$$;
