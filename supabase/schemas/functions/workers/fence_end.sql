-- Closes the open fence and sets every member's enabled flag back to the value
-- recorded at fence_begin: only queue functions that were enabled before are enabled.
create or replace function switchyard.fence_end()
returns table (fence_id bigint, function_name text, was_enabled boolean, enabled boolean)
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  open_id bigint;
begin
  perform switchyard._lock_fences();
  select f.fence_id into open_id from switchyard.fences f where f.closed_at is null for update;
  if not found then
    raise exception using errcode = 'SY011', message = 'fence_end: no fence is open',
      detail = jsonb_build_object()::text,
      hint = 'open one with select * from switchyard.fence_begin(array[''<function>'', ...])';
  end if;
  update switchyard.worker_functions f
     set enabled = m.was_enabled
    from switchyard.fence_members m
   where m.fence_id = open_id and f.function_name = m.function_name;
  update switchyard.fences f set closed_at = switchyard.clock_now() where f.fence_id = open_id;
  return query
    select m.fence_id, m.function_name, m.was_enabled, f.enabled
      from switchyard.fence_members m
      join switchyard.worker_functions f on f.function_name = m.function_name
     where m.fence_id = open_id
     order by m.function_name;
end
$$;
