-- Sleeps until a time read from the input (issue 22, docs/ARCHITECTURE.md §5.11): the path to
-- the timestamp and which input it is read from.
alter table switchyard.steps add column sleep_until text[];

alter table switchyard.steps add column sleep_until_input text
  check (sleep_until_input in ('run', 'step'));

alter table switchyard.steps add constraint steps_sleep_until check (
  (sleep_until is null) = (sleep_until_input is null)
  and (sleep_until is null or (step_type = 'sleep' and wait_timeout is null)));
