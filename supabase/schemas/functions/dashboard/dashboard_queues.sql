-- Every catalogued queue with its depth, read from PGMQ's queue table (the documented
-- layout the contract suite checks; docs/design/claim.md#hiding-claimed-messages): messages visible
-- now,
-- hidden (read or claimed, or waiting for a retry's delay), and the oldest one's age.
create or replace function switchyard.dashboard_queues()
returns table (
  queue_name text, pgmq_name text, ownership text, owner_flow text,
  visible bigint, hidden bigint, oldest_enqueued_at timestamptz
)
language plpgsql
stable
security definer
set search_path = ''
as $$
declare
  q record;
  tbl text;
begin
  for q in
    select x.queue_name, x.pgmq_name, x.ownership, x.owner_flow
      from switchyard.queues x order by x.queue_name
  loop
    queue_name := q.queue_name;
    pgmq_name := q.pgmq_name;
    ownership := q.ownership;
    owner_flow := q.owner_flow;
    visible := null;
    hidden := null;
    oldest_enqueued_at := null;
    tbl := pgmq.format_table_name(q.pgmq_name, 'q');
    if to_regclass(format('pgmq.%I', tbl)) is not null then
      execute format(
        'select count(*) filter (where vt <= switchyard.queue_clock()),
                count(*) filter (where vt > switchyard.queue_clock()), min(enqueued_at)
           from pgmq.%I', tbl)
        into visible, hidden, oldest_enqueued_at;
    end if;
    return next;
  end loop;
end
$$;
