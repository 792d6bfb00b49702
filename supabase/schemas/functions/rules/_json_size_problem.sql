-- The size of a JSON value against its limit, as a refusal: null when it fits.
create or replace function switchyard._json_size_problem(value jsonb, limit_name text)
returns jsonb
language plpgsql
stable
set search_path = ''
as $$
declare
  size bigint := octet_length(value::text);
  max_size int := switchyard.limit_value(limit_name);
begin
  if size <= max_size then
    return null;
  end if;
  return jsonb_build_object('size', size, 'limit', max_size,
                            'excerpt', left(value::text, 200));
end
$$;
