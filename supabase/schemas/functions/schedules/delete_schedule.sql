-- Deletes a schedule and its tick records; the runs it started are kept. Returns whether it
-- existed.
create or replace function switchyard.delete_schedule(name text)
returns boolean
language plpgsql
volatile
set search_path = ''
as $$
begin
  delete from switchyard.schedules x where x.name = delete_schedule.name;
  return found;
end
$$;
