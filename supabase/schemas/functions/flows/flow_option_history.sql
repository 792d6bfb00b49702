-- The recorded option changes, newest first; of one flow when of_flow is given.
create or replace function switchyard.flow_option_history(of_flow text default null, max_rows int default 100)
returns table (
  change_id bigint, flow_slug text, changed_at timestamptz, changed_by text,
  application_name text, old_options jsonb, new_options jsonb, differences text[]
)
language plpgsql
stable
security definer
set search_path = ''
as $$
begin
  if max_rows is null or max_rows < 1 or max_rows > 10000 then
    perform switchyard._refuse('22023', 'integer_range', 'max_rows', max_rows::text, format(
      'flow_option_history max_rows %s is invalid: use an integer from 1 to 10000',
      coalesce(max_rows::text, 'null')),
      context => jsonb_build_object('min', 1, 'max', 10000));
  end if;
  return query
    select c.change_id, c.flow_slug, c.changed_at, c.changed_by, c.application_name,
           c.old_options, c.new_options, c.differences
      from switchyard.flow_option_changes c
     where of_flow is null or c.flow_slug = of_flow
     order by c.change_id desc
     limit max_rows;
end
$$;
