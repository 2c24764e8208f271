from orchestra.relay.launch import main

main(module="orchestra.relay")
