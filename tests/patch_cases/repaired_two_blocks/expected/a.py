one
TWO
