-- Checks a flow's `batch` option (docs/design/batching.md): {"maxSize": 1 to 10000, "timeout":
-- 1 to 86400 seconds}, both required, nothing else; absent or JSON null: the flow is not
-- batched. A batched run's input is the list of its events, so a step that reads a key of the
-- run input (a concurrency key or a sleepUntil with "input": "run") makes no sense there and is
-- refused (22023 batch_run_input_key). The option is part of the flow's structure (a version
-- takes single inputs or lists, never both): ensure_flow refuses changing it under one slug.
create or replace function switchyard._check_batch_option(slug text, canonical jsonb)
returns void
language plpgsql
immutable
set search_path = ''
as $$
declare
  batch jsonb := nullif(canonical -> 'options' -> 'batch', 'null'::jsonb);
  what text := format('flow %s option batch', to_json(slug));
  reader text;
begin
  if batch is null then
    return;
  end if;
  if jsonb_typeof(batch) <> 'object' or (batch - array['maxSize', 'timeout']) <> '{}'::jsonb then
    perform switchyard._refuse('22023', 'batch_invalid', 'batch', left(batch::text, 200), format(
      '%s %s is invalid: use {"maxSize": 1 to 10000, "timeout": 1 to 86400 seconds}',
      what, left(batch::text, 200)), context => jsonb_build_object('flow_slug', slug));
  end if;
  perform switchyard._int_option(batch, 'maxSize', what, 1, 10000, false);
  perform switchyard._int_option(batch, 'timeout', what, 1, 86400, false);
  select s ->> 'slug' into reader
    from jsonb_array_elements(canonical -> 'steps') as e(s)
   where coalesce(s -> 'options' -> 'concurrency' ->> 'input', 'run') = 'run'
         and nullif(s -> 'options' -> 'concurrency', 'null'::jsonb) is not null
      or coalesce(s -> 'options' -> 'sleepUntil' ->> 'input', 'run') = 'run'
         and nullif(s -> 'options' -> 'sleepUntil', 'null'::jsonb) is not null
   limit 1;
  if reader is not null then
    perform switchyard._refuse('22023', 'batch_run_input_key', 'batch', left(batch::text, 200),
      format('%s: step %s reads a key of the run input (a concurrency key or sleepUntil with '
        '"input": "run"), but a batched run''s input is the list of its events, which has no '
        'keys: read the key from a step''s input ("input": "step"), or do not batch this flow',
        what, to_json(reader)::text),
      context => jsonb_build_object('flow_slug', slug, 'step_slug', reader));
  end if;
end
$$;
