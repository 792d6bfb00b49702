-- Queues created or adopted before issue 27 get the queue-table settings of _tune_queue_table
-- (docs/ARCHITECTURE.md §3): an ALTER of its storage options takes a SHARE UPDATE EXCLUSIVE
-- lock, which reads, sends, claims and archives do not wait for.
select switchyard._tune_queue_table(q.pgmq_name) from switchyard.queues q order by q.queue_name;
