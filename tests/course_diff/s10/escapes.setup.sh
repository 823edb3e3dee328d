mkdir -p ../outside && ln -s ../outside .tasks
