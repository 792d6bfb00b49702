-- Function names (at most 63 characters) and their queue, which must be in the queue catalog
-- (docs/design/overview.md#queue-ownership): register_function no longer accepts a queue that
-- exists nowhere
-- (the scaffold's migration provisions its shared queue first), register_worker already checks.
create or replace function switchyard._check_worker_function()
returns trigger
language plpgsql
set search_path = ''
as $$
declare
  max_chars int := switchyard.limit_value('max_function_name_chars');
begin
  if char_length(new.function_name) > max_chars then
    perform switchyard._refuse('22023', 'max_function_name_chars', 'function_name',
      new.function_name, format(
      'function name %s is %s characters long, over the limit of %s characters',
      switchyard._clip(new.function_name), char_length(new.function_name), max_chars),
      context => jsonb_build_object('size', char_length(new.function_name), 'limit', max_chars));
  end if;
  if not exists (select 1 from switchyard.queues q where q.queue_name = new.queue_name) then
    perform switchyard._refuse('22023', 'queue_unknown', 'queue_name', new.queue_name, format(
      'function %s: queue %s is unknown: it is not in the queue catalog (switchyard.queues), so no '
      'compiled flow routes a step to it; provision a shared queue first with '
      'select switchyard.ensure_shared_queue(%L), or start a worker that routes to it',
      to_json(new.function_name)::text, switchyard._clip(new.queue_name), new.queue_name),
      context => jsonb_build_object('function_name', left(new.function_name, 200)));
  end if;
  return new;
end
$$;
