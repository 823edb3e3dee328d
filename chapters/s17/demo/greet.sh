#!/bin/sh
# Greets the world.
echo "Hello world"
