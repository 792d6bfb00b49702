-- A declared signal payload schema is one the check understands (issue 36), as triggers.sql
-- creates it.
create trigger user_signal_steps_schema before insert or update of payload_schema
  on switchyard.user_signal_steps
  for each row execute function switchyard._check_user_signal_step();
