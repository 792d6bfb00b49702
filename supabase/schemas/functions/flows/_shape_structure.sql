-- A canonical shape without its runtime options: what must never change under one slug.
create or replace function switchyard._shape_structure(canonical jsonb)
returns jsonb
language sql
immutable
set search_path = ''
as $$
  select canonical || jsonb_build_object(
    'options', coalesce(canonical -> 'options', '{}')
               - array['maxAttempts', 'baseDelay', 'maxDelay', 'timeout', 'runTimeout', 'events'],
    'steps', coalesce((
      select jsonb_agg(case when jsonb_typeof(s) = 'object' then
                 s || jsonb_build_object('options', coalesce(s -> 'options', '{}')
                   - array['maxAttempts', 'baseDelay', 'maxDelay', 'timeout', 'startDelay',
                           'rateLimit', 'concurrency'])
               else s end order by o)
        from jsonb_array_elements(canonical -> 'steps') with ordinality as e(s, o)), '[]'))
$$;
