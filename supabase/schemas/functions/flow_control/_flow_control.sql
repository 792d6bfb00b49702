-- Flow control in the claim (docs/design/flow-control.md#rate-limits-and-keyed-concurrency): for
-- the eligible messages of a batch
-- whose steps have a rate limit or a keyed concurrency, in message order, whether each may start
-- now (wait_seconds null; slot: the concurrency slot it takes, or null) or waits (wait_seconds:
-- when it may run: the next tokens of its limit, at most 5 s so that a limit the operator
-- raises takes effect by the message's next claim; or 1 s for a full concurrency key, whose
-- slot frees when a started task of the key ends). Messages of steps without flow control are not
-- returned. Called by start_tasks with the batch's tasks locked; it takes the concurrency keys'
-- advisory locks (sorted), then the rate limits' rows (sorted), so two claims cannot deadlock and
-- a key's started tasks are counted after the claim before this one committed. The tokens taken
-- are written here; a task waiting takes none.
create or replace function switchyard._flow_control(queue text, ids bigint[])
returns table (message_id bigint, wait_seconds int, slot text)
language plpgsql
volatile
set search_path = ''
as $$
declare
  t record;
  lim record;
  m_ids bigint[] := '{}';
  m_slots text[] := '{}';
  m_limits int[] := '{}';
  m_rates text[] := '{}';
  m_costs int[] := '{}';
  granted text[] := '{}';
  key text;
  used bigint;
  per_second double precision;
  avail double precision;
  wait int;
begin
  for t in
    select x.message_id, x.run_id, x.flow_slug, x.step_slug, x.task_index, st.rate_limit,
           st.rate_cost, st.concurrency_limit
      from (select distinct u.id from unnest(ids) as u(id)) b
      cross join lateral (select y.message_id, y.run_id, y.flow_slug, y.step_slug, y.task_index
                            from switchyard.step_tasks y
                           where y.queue_name = queue and y.message_id = b.id
                           limit 1) x
      join switchyard.steps st on st.flow_slug = x.flow_slug and st.step_slug = x.step_slug
     where st.rate_limit is not null or st.concurrency_limit is not null
     order by x.message_id
  loop
    key := switchyard._concurrency_key(t.run_id, t.flow_slug, t.step_slug, t.task_index);
    m_ids := m_ids || t.message_id;
    m_slots := m_slots || key;
    m_limits := m_limits || t.concurrency_limit;
    m_rates := m_rates || t.rate_limit;
    m_costs := m_costs || t.rate_cost;
  end loop;
  if cardinality(m_ids) = 0 then
    return;
  end if;

  perform pg_advisory_xact_lock(hashtextextended('switchyard.concurrency:' || k.slot, 0))
     from (select distinct s.slot from unnest(m_slots) as s(slot)
            where s.slot is not null order by s.slot) k;
  perform 1 from switchyard.rate_limits l
    where l.name = any (m_rates)
    order by l.name
      for update;

  for i in 1 .. cardinality(m_ids) loop
    wait := null;
    if m_slots[i] is not null then
      -- Started tasks holding the key (committed; the lock above orders the claims), and the
      -- ones this batch gave it.
      select count(*) into used from switchyard.step_tasks y
       where y.concurrency_key = m_slots[i] and y.status = 'started';
      used := used + (select count(*) from unnest(granted) g where g = m_slots[i]);
      if used >= m_limits[i] then
        wait := 1;
      end if;
    end if;
    if wait is null and m_rates[i] is not null then
      select l.rate, l.per_seconds, l.burst, l.tokens, l.refilled_at into lim
        from switchyard.rate_limits l where l.name = m_rates[i];
      if found then
        per_second := lim.rate::double precision / lim.per_seconds;
        avail := least(greatest(lim.burst, m_costs[i]),
                       lim.tokens + greatest(0, extract(epoch from switchyard.clock_now() - lim.refilled_at))
                                    * per_second);
        if avail >= m_costs[i] then
          update switchyard.rate_limits l
             set tokens = avail - m_costs[i], refilled_at = greatest(l.refilled_at, switchyard.clock_now())
           where l.name = m_rates[i];
        else
          wait := least(5, greatest(1, ceil(
            greatest(0, extract(epoch from lim.refilled_at - switchyard.clock_now()))
            + (m_costs[i] - avail) / per_second)))::int;
        end if;
      end if;
    end if;
    if wait is null and m_slots[i] is not null then
      granted := granted || m_slots[i];
    end if;
    message_id := m_ids[i];
    wait_seconds := wait;
    slot := m_slots[i];
    return next;
  end loop;
end
$$;
