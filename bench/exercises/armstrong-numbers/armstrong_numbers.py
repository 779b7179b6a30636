def is_armstrong_number(number):
    pass
