-- Readable differences between a compiled shape and a requested one.
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
  new_count int := jsonb_array_length(new_shape -> 'steps');
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
  if old_count <> new_count then
    diffs := diffs || format('step count %s -> %s', old_count, new_count);
  end if;
  for i in 0 .. greatest(old_count, new_count) - 1 loop
    o := old_shape -> 'steps' -> i;
    n := new_shape -> 'steps' -> i;
    if o is null then
      diffs := diffs || format('step %s added', n -> 'slug');
    elsif n is null then
      diffs := diffs || format('step %s removed', o -> 'slug');
    elsif o -> 'slug' is distinct from n -> 'slug' then
      diffs := diffs || format('step #%s %s -> %s', i, o -> 'slug', n -> 'slug');
    else
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
