-- The user rate limit of start_user_run counts a user's runs of the last minute through this
-- index.
create index runs_owner_started on switchyard.runs (owner, started_at) where owner is not null;
