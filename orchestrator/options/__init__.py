"""What the commands hand to the work below them besides their own options: the screen."""
