def color_code(color):
    pass


def colors():
    pass
