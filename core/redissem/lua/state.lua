-- Read once for the fast paths and the prelude's start(id): S's counters and
-- the field of id (ARGV[3]).
state = redis.call('HMGET', KEYS[1], STATE_FIELDS(), '#' .. ARGV[3])
