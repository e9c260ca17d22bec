return 2
