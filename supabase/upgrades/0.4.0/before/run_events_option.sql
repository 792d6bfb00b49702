-- The flow option events (issue 27): false writes no run_events rows, as the table file has it.
alter table switchyard.flows add column events boolean not null default true;
