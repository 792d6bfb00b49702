-- The runtime options of a canonical shape: {"flow": {...}, "steps": {"<slug>": {...}}}.
create or replace function switchyard._shape_options(canonical jsonb)
returns jsonb
language sql
immutable
set search_path = ''
as $$
  select jsonb_build_object(
    'flow', (select coalesce(jsonb_object_agg(k, canonical -> 'options' -> k), '{}')
               from unnest(array['maxAttempts', 'baseDelay', 'maxDelay', 'timeout', 'runTimeout',
                                   'events'])
                      as k
              where canonical -> 'options' ? k),
    'steps', coalesce((
      select jsonb_object_agg(s ->> 'slug', (
               select coalesce(jsonb_object_agg(k, s -> 'options' -> k), '{}')
                 from unnest(array['maxAttempts', 'baseDelay', 'maxDelay', 'timeout',
                                   'startDelay', 'rateLimit', 'concurrency']) as k
                where s -> 'options' ? k))
        from jsonb_array_elements(canonical -> 'steps') as e(s)
       where jsonb_typeof(s) = 'object'), '{}'))
$$;
