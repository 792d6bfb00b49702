-- Every recorded time of the SQL core comes from its clock, switchyard.clock_now()
-- (docs/design/clock.md), column defaults included, as tables/*.sql declare them. The function
-- is now(), so rows written before and after this step read the same clock.
alter table switchyard.queues
  alter column created_at set default switchyard.clock_now();
alter table switchyard.flows
  alter column created_at set default switchyard.clock_now();
alter table switchyard.flow_option_changes
  alter column changed_at set default switchyard.clock_now();
alter table switchyard.aliases
  alter column activated_at set default switchyard.clock_now();
alter table switchyard.alias_members
  alter column added_at set default switchyard.clock_now();
alter table switchyard.alias_activations
  alter column activated_at set default switchyard.clock_now();
alter table switchyard.alias_declarations
  alter column declared_at set default switchyard.clock_now();
alter table switchyard.runs
  alter column started_at set default switchyard.clock_now();
alter table switchyard.step_states
  alter column created_at set default switchyard.clock_now();
alter table switchyard.run_signals
  alter column signalled_at set default switchyard.clock_now();
alter table switchyard.step_tasks
  alter column queued_at set default switchyard.clock_now();
alter table switchyard.run_events
  alter column created_at set default switchyard.clock_now();
alter table switchyard.user_start_aliases
  alter column added_at set default switchyard.clock_now();
alter table switchyard.task_checkpoints
  alter column saved_at set default switchyard.clock_now();
alter table switchyard.user_signal_steps
  alter column added_at set default switchyard.clock_now();
alter table switchyard.worker_functions
  alter column created_at set default switchyard.clock_now();
alter table switchyard.workers
  alter column started_at set default switchyard.clock_now(),
  alter column last_heartbeat_at set default switchyard.clock_now();
alter table switchyard.quarantined_messages
  alter column quarantined_at set default switchyard.clock_now();
alter table switchyard.refusals
  alter column first_at set default switchyard.clock_now(),
  alter column last_at set default switchyard.clock_now();
alter table switchyard.settings
  alter column updated_at set default switchyard.clock_now();
alter table switchyard.wake_requests
  alter column requested_at set default switchyard.clock_now();
alter table switchyard.fences
  alter column opened_at set default switchyard.clock_now();
alter table switchyard.rate_limits
  alter column refilled_at set default switchyard.clock_now(),
  alter column updated_at set default switchyard.clock_now();
alter table switchyard.schedules
  alter column created_at set default switchyard.clock_now(),
  alter column updated_at set default switchyard.clock_now();
alter table switchyard.schedule_ticks
  alter column recorded_at set default switchyard.clock_now();
alter table switchyard.start_keys
  alter column first_at set default switchyard.clock_now();
