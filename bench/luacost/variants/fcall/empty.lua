#!lua name=luacost
redis.register_function('luacost_acq', function(k, a) return 1 end)
redis.register_function('luacost_rel', function(k, a) return 2 end)
