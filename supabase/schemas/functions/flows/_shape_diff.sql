-- Readable differences between a compiled shape and a requested one, steps by slug.
create or replace function switchyard._shape_diff(old_shape jsonb, new_shape jsonb)
returns text[]
language plpgsql
immutable
set search_path = ''
as $$
declare
  diffs text[] := '{}';
  i int;
  o jsonb;
  n jsonb;
  k text;
  old_count int := jsonb_array_length(old_shape -> 'steps');
begin
  if old_shape -> 'placement' is distinct from new_shape -> 'placement' then
    diffs := diffs || format('placement %s -> %s', old_shape -> 'placement', new_shape -> 'placement');
  end if;
  for k in select jsonb_object_keys(coalesce(old_shape -> 'options', '{}') || coalesce(new_shape -> 'options', '{}')) loop
    if old_shape -> 'options' -> k is distinct from new_shape -> 'options' -> k then
      diffs := diffs || format('flow option %s %s -> %s', k,
        coalesce((old_shape -> 'options' -> k)::text, 'absent'), coalesce((new_shape -> 'options' -> k)::text, 'absent'));
    end if;
  end loop;
  -- Steps by slug, not by position: a step added in the middle is that step added, not every
  -- later step changed (issue 37).
  for n in select value from jsonb_array_elements(new_shape -> 'steps') loop
    if not exists (select 1 from jsonb_array_elements(old_shape -> 'steps') x(s)
                    where x.s -> 'slug' = n -> 'slug') then
      diffs := diffs || format('step %s added', n -> 'slug');
    end if;
  end loop;
  for o in select value from jsonb_array_elements(old_shape -> 'steps') loop
    if not exists (select 1 from jsonb_array_elements(new_shape -> 'steps') x(s)
                   where x.s -> 'slug' = o -> 'slug') then
      diffs := diffs || format('step %s removed', o -> 'slug');
    end if;
  end loop;
  if (select jsonb_agg(x.s -> 'slug' order by x.i)
        from jsonb_array_elements(old_shape -> 'steps') with ordinality x(s, i)
       where exists (select 1 from jsonb_array_elements(new_shape -> 'steps') y(s)
                      where y.s -> 'slug' = x.s -> 'slug'))
     is distinct from
     (select jsonb_agg(x.s -> 'slug' order by x.i)
        from jsonb_array_elements(new_shape -> 'steps') with ordinality x(s, i)
       where exists (select 1 from jsonb_array_elements(old_shape -> 'steps') y(s)
                      where y.s -> 'slug' = x.s -> 'slug')) then
    diffs := diffs || 'step order changed'::text;
  end if;
  for i in 0 .. old_count - 1 loop
    o := old_shape -> 'steps' -> i;
    select x.s into n from jsonb_array_elements(new_shape -> 'steps') x(s)
     where x.s -> 'slug' = o -> 'slug' limit 1;
    if n is not null then
      if o -> 'kind' is distinct from n -> 'kind' then
        diffs := diffs || format('step %s kind %s -> %s', o -> 'slug',
          coalesce((o -> 'kind')::text, 'absent'), coalesce((n -> 'kind')::text, 'absent'));
      end if;
      if o -> 'queue' is distinct from n -> 'queue' then
        diffs := diffs || format('step %s queue %s -> %s', o -> 'slug', o -> 'queue', n -> 'queue');
      end if;
      if o -> 'dependsOn' is distinct from n -> 'dependsOn' then
        diffs := diffs || format('step %s dependsOn %s -> %s', o -> 'slug', o -> 'dependsOn', n -> 'dependsOn');
      end if;
      for k in select jsonb_object_keys(coalesce(o -> 'options', '{}') || coalesce(n -> 'options', '{}')) loop
        if o -> 'options' -> k is distinct from n -> 'options' -> k then
          diffs := diffs || format('step %s option %s %s -> %s', o -> 'slug', k,
            coalesce((o -> 'options' -> k)::text, 'absent'), coalesce((n -> 'options' -> k)::text, 'absent'));
        end if;
      end loop;
    end if;
  end loop;
  if cardinality(diffs) = 0 and old_shape is distinct from new_shape then
    diffs := diffs || 'shape documents differ'::text;
  end if;
  return diffs;
end
$$;
