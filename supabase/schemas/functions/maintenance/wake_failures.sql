-- The keep-alive's wakes whose HTTP answer was an error, per function, over the last
-- since_seconds, default 6 hours (docs/design/versions.md, keep-alive): a request pg_net refused
-- (recorded with no request id), or pg_net's response (net._http_response, joined by request id)
-- with a status of 400 or more, a timeout or an error message. pg_net keeps responses for 6 hours
-- by default, so older wakes are unknown, not failed; a wake whose response has not arrived is
-- neither. With each function: how many failed, the latest failure (its time, status and error,
-- cut at 300 characters) and the latest wake answered without error. Without pg_net's table only
-- refused requests count.
create or replace function switchyard.wake_failures(since_seconds int default 21600)
returns table (
  function_name text, failures bigint, last_failed_at timestamptz, last_status int,
  last_error text, last_ok_at timestamptz
)
language plpgsql
stable
security definer
set search_path = ''
as $$
declare
  responses text := case when to_regclass('net._http_response') is not null
                         then 'net._http_response' end;
begin
  if since_seconds is null or since_seconds < 1 then
    perform switchyard._refuse('22023', 'integer_min', 'since_seconds', since_seconds::text, format(
      'wake_failures: since_seconds %s is invalid: use an integer of at least 1',
      coalesce(since_seconds::text, 'null')),
      context => jsonb_build_object('min', 1));
  end if;
  return query execute format($q$
    with wakes as (
      select w.function_name, w.requested_at,
             r.status_code,
             case
               when w.request_id is null then 'pg_net refused the request'
               when r.status_code >= 400 then
                 format('HTTP %%s: %%s', r.status_code, left(coalesce(r.content, ''), 300))
               when r.timed_out then 'timed out'
               when r.error_msg is not null then left(r.error_msg, 300)
             end as error,
             (r.status_code < 400 and r.error_msg is null and not coalesce(r.timed_out, false))
               as ok
        from switchyard.wake_requests w
        left join %s r on r.id = w.request_id
       where w.via = 'pg_net' and w.requested_at >= switchyard.clock_now() - make_interval(secs => $1)
    )
    select w.function_name,
           count(*) filter (where w.error is not null),
           max(w.requested_at) filter (where w.error is not null),
           (array_agg(w.status_code order by w.requested_at desc)
              filter (where w.error is not null))[1],
           (array_agg(w.error order by w.requested_at desc) filter (where w.error is not null))[1],
           max(w.requested_at) filter (where w.ok)
      from wakes w
     group by w.function_name
    having count(*) filter (where w.error is not null) > 0
     order by w.function_name$q$,
    coalesce(responses,
             '(select null::bigint as id, null::int as status_code, null::text as content, '
             'null::boolean as timed_out, null::text as error_msg)'))
    using since_seconds;
end
$$;
