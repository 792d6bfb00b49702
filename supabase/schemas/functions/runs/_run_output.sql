-- A run's output (see _run_outputs, its one definition): _complete_run_if_done (a run that
-- ended by a skip or an empty map) calls it.
create or replace function switchyard._run_output(run uuid, flow text)
returns jsonb
language plpgsql
stable
set search_path = ''
as $$
begin
  return coalesce((select o.output from switchyard._run_outputs(array[run]) o), '{}'::jsonb);
end
$$;
